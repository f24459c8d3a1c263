"""Single-blind rating studies: comparator plans, randomised blinded packets, ratings and their
statistics (EvoMDT's Layer 3)."""
