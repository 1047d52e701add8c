"""Hidden tests of the bonus assignment context_extension: stretching a RoPE model's context."""
