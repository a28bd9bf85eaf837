"""Placements: where a started (job, option) goes within a pool (`base.Placement`); registered in
`spotlab.cluster.registry.PLACEMENTS`."""
