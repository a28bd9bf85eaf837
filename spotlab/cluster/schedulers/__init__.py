"""Schedulers: which queued jobs start, in which order, with which option (`base.Scheduler`); registered in
`spotlab.cluster.registry.SCHEDULERS`."""
