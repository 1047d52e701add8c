"""The sandbox: supervisor.py watches a job (attempts, clocks, channel_reader.py for what it sends); launch.py starts
it from the warm zygote (warm.py, zygote.py) or bubblewrap (bubblewrap.py), inside cgroups.py's limits; layout.py and
seccomp.py are what both ways build."""
