"""First-party baseline methods: independent training, L2 feature regression, experience replay."""
