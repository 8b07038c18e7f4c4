"""Euclidean compatibility methods: BCT, LCE, AdvBCT, CVS, FAN, LwF and incremental fine-tuning."""
