"""The cluster side of a run: where its dask workers come from and how the driver reaches them.

- :mod:`.engine`: the cluster a run asked for (a LocalCluster, a batch system's, a running scheduler), started,
  connected to and shut down with the run's signals held;
- :mod:`.batch`: the batch systems' cluster configs and job scripts (dask-jobqueue's SLURM and PBS clusters);
- :mod:`.jobwatch`: whether the batch system will ever give the run a worker;
- :mod:`.arrays`: job arrays, each element a share of a store's tasks;
- :mod:`.security`: the run's TLS credentials;
- :mod:`.probe`: what answers at a ``--scheduler`` address.
"""

__all__: list[str] = []     # a room of the run and the command line, reached through its modules
