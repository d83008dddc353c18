"""The run layer: a study run on this machine, from what it expands to to what is stored.

The library calls (`session.run` -> `Outcome`; `preflight.estimate`, what a run takes
before it starts; `resume.resumed_study`; `studycheck`, what `dbarena study check`
prints) over the sweep (`runner`: each point measured through `measure`, the one
measuring path, with the dataset steps of `dataset_lifecycle`), what a run records
besides its points (`provenance`), which CPUs each variant gets (`placement`) and the
points of a study (`plan`). Front ends (cli/, fleet/) call into it; it imports nothing
of them.
"""
