"""The submission portal (`make portal`): students upload notebooks and read their feedback under the
instructor's deadlines and attempt limits; grading goes through the same pipeline and sandbox as `make grade`
and lands in the same gradebook and results store."""
