"""Features from classifier outputs: PSP (softmax probabilities) and LSP (logits)."""
