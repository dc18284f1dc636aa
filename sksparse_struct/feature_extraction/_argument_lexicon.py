"""Argumentative discourse markers (Stab & Gurevych 2017, Appendix C, Table C1).

Stab and Gurevych (Computational Linguistics 43(3), 2017) list the phrases
that signal the function of an argument component in persuasive essays, in
four categories: *forward* markers introduce a claim that follows from what
came before, *backward* markers a premise of what came before, *thesis*
markers the author's stance, and *rebuttal* markers a counter-argument.
The table gives several phrases in both casings ("So" / "so"), kept here as
separate entries, since :class:`ArgumentFeatures` matches case-sensitively
by default. Two phrases broken by the journal's hyphenation ("Consid- ering",
"Further- more") are written whole.
"""

__all__ = ["ARGUMENT_MARKERS"]

_FORWARD = (
    "As a result", "As the consequence", "Because", "Clearly", "Consequently",
    "Considering this subject", "Furthermore", "Hence", "leading to the consequence",
    "so", "So", "taking account on this fact", "That is the reason why",
    "The reason is that", "Therefore", "therefore", "This means that",
    "This shows that", "This will result", "Thus", "thus",
    "Thus, it is clearly seen that", "Thus, it is seen", "Thus, the example shows",
)

_BACKWARD = (
    "Additionally", "As a matter of fact", "because", "Besides", "due to", "Finally",
    "First of all", "Firstly", "for example", "For example", "For instance",
    "for instance", "Furthermore", "has proved it", "In addition",
    "In addition to this", "In the first place", "is due to the fact that",
    "It should also be noted", "Moreover", "On one hand", "On the one hand",
    "On the other hand", "One of the main reasons", "Secondly", "Similarly", "since",
    "Since", "So", "The reason", "To begin with", "To offer an instance", "What is more",
)

_THESIS = (
    "All in all", "All things considered", "As far as I am concerned",
    "Based on some reasons", "by analyzing both the views",
    "considering both the previous fact", "Finally", "For the reasons mentioned above",
    "From explanation above", "From this point of view", "I agree that", "I agree with",
    "I agree with the statement that", "I believe", "I believe that",
    "I do not agree with this statement", "I firmly believe that",
    "I highly advocate that", "I highly recommend", "I strongly believe that",
    "I think that", "I think the view is", "I totally agree",
    "I totally agree to this opinion", "I would have to argue that",
    "I would reaffirm my position that", "In conclusion", "in conclusion",
    "in my opinion", "In my opinion", "In my personal point of view",
    "in my point of view", "In my point of view", "In summary",
    "In the light of the facts outlined above", "it can be said that",
    "it is clear that", "it seems to me that", "my deep conviction", "My sentiments",
    "Overall", "Personally", "the above explanations and example shows that",
    "This, however", "To conclude", "To my way of thinking", "To sum up", "Ultimately",
)

_REBUTTAL = (
    "Admittedly", "although", "Although", "besides these advantages", "but", "But",
    "Even though", "even though", "However", "Otherwise",
)

#: The built-in lexicon of :class:`ArgumentFeatures`: category -> phrases.
ARGUMENT_MARKERS = {
    "forward": _FORWARD,
    "backward": _BACKWARD,
    "thesis": _THESIS,
    "rebuttal": _REBUTTAL,
}
