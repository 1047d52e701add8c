"""Hidden tests of the bonus assignment: RoPE and ALiBi."""
