"""Hidden tests of the assignment relative_positions: Shaw et al.'s clipped representations, T5's buckets and bias
(with its backward pass), Transformer-XL's relative logits."""
