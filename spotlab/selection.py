"""Old import path of the selection algorithms, kept for existing code: they live in `spotlab.policies.hedge`,
beside the policy that uses them (`policies.select`)."""

from .policies.hedge import *  # noqa: F401,F403
from .policies.hedge import __all__  # noqa: F401
