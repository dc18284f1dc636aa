"""Argument mining: joint proposition classification and link prediction."""
