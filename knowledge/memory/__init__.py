"""Experience memory (CorrectKB / ChainKB, MDTeamGPT) and governed self-evolution (EvoMDT):
what the board learns from clinicians' reviews and raters' scores, and only through an admin."""
