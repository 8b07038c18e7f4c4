"""Hyperbolic backward-compatible training (HBCT) on the Lorentz model, with and without its entailment loss."""
