"""The sandbox: bubblewrap isolation, the seccomp filter, limits and the supervisor of a job."""
