"""Training loop, checkpoints, feature extraction and compatibility evaluation."""
