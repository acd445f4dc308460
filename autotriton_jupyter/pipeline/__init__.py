"""From a task to ranked, verified kernels (UI-free), for every front (CLI, magic, panel).

- attempt.py: one model answer as a candidate (Attempt), a run's answers (Result), ranking;
- run.py: tritonize, the sample-verify-rank loop with its repair, speed and tuning rounds;
- samples.py: `autotriton generate`, answers written to files without verification.
"""

from .attempt import Attempt, Result, rank_key, speedups
from .run import PipelineEvent, tritonize

__all__ = ["Attempt", "PipelineEvent", "Result", "rank_key", "speedups", "tritonize"]
