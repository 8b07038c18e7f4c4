"""Hyperbolic backward-compatible training (HBCT) on the Lorentz model, and the Hot-Refresh baseline."""
