"""Structured inference over any :class:`~sksparse_struct.structures.Structure`."""

__all__ = []
