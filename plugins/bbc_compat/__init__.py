"""Euclidean compatibility methods: BCT, LCE, AdvBCT, CVS, FAN, Hot-Refresh, LwF and incremental fine-tuning."""
