"""The run tags the runner writes and reads back, named once (stdlib only).

Every module that sets or queries one of these tags imports its name from here, so a writer
and a reader (the job, the sweep, the report, the fast sqlite look of ``sqlite_peek``) cannot
drift apart.
"""

from __future__ import annotations

PARENT_TAG = "mlflow.parentRunId"
"""MLflow's tag naming a run's parent (a sweep's children carry it): MLflow's UI nests by it."""
FINGERPRINT_TAG = "fingerprint"
"""A job's fingerprint (``runner.config.fingerprint``): the cell it stands for."""
INPUTS_TAG = "fingerprint.inputs"
"""The digests of the fingerprint's parts, so a report can name what changed between versions."""
FAILED_DOCUMENTS_TAG = "runner.documents_failed"
"""Set (to the count) on a FINISHED run whose failed documents were skipped (on_error=continue):
its values cover fewer documents, so its cell is not done (``runner.tracking.done``)."""
RUN_KIND_TAG = "runner.kind"
"""What a run that is not a job is: ``SWEEP_KIND`` (a sweep's parent) or ``HUMAN_KIND``."""
SWEEP_KIND = "sweep"
HUMAN_KIND = "human"
SWEEP_KEY_TAG = "runner.sweep_key"
"""A sweep parent's identity (``runner.sweep.callback.sweep_key``): a rerun finds it by it."""
SWEEP_TAG = "runner.sweep"
"""On a sweep's job: its parent's run id."""
STOPPED_TAG = "runner.stopped"
"""Why the runner stopped a run early (``budget``)."""
SUPERSEDED_TAG = "runner.superseded_by"
"""On a sweep's job: the id of a newer job of the same cell in that sweep (a rerun with
``force=true``, or after a plugin changed); the sweep's view of its results leaves it out."""
CHILDREN_TAG = "runner.children"
"""On a sweep's parent: its children counted by status."""
UNDECIDED_TAG = "runner.undecided"
"""On a FINISHED job: its judged headline values undecided for every document, as a JSON list
(the judge decided nothing: no number to report); a report names them instead of a value."""
HEADLINE_TAG = "runner.headline"
"""A job's headline values (``<label>/<value>`` of each metric's ``headline``), as a JSON list:
the viewer's document table shows them, whatever label the run gave each metric."""

BATCH_TAG = "runner.batch"
"""A run whose requests travel in provider batches (``<role>.batch=true``): what it is waiting
for while RUNNING ('judge=claude: waiting 12 min for msgbatch_... in_progress 120/300 done'),
then what answered it."""
BATCH_IDS_TAG = "runner.batch_ids"
"""The provider batches that answered the run (comma-separated), for ``python -m runner.batches``
and the provider's console."""
