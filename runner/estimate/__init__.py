"""``estimate=true``: a job's or sweep's model calls, tokens, cost and wall time, before any call.

Predicted from the chunking (the real tokenizer), the calls each strategy and metric says it
makes (its own ``estimate`` hook, ``runner.api.estimating``), the roles' prices and the store's
history of each endpoint's latency and tokens per call. This package is the generic machinery
and knows no strategy or metric by name.

Modules: ``command`` (the entry point's and the sweeper's door: documents, done cells, the
printed table), ``cell`` (one job: the plugins' hooks called), ``guide`` (a role's measured
or guessed figures, the ``Guide`` a hook is given), ``history`` (the store's calls.jsonl),
``latency`` (seconds per call; defaults per provider with their sources), ``rates``
(model.rpm and tpm), ``cached`` (requests the response cache answers), ``ranges`` (the cell
again at its guesses' bounds: ranges, and what each guess drives), ``span`` (those ranges as
values), ``report`` (the table).

May import: the plugin API, ``runner.config``, ``runner.data``, ``runner.llm``'s modules that
load no litellm (``spec``, ``request``, ``cache``, ``prices``: litellm's price map read as
data, batch prices too; ``batch.providers``: which batch API serves a model, no SDK imported)
and ``runner.tracking.sqlite_peek`` (the runs of a model in a sqlite store); never
``runner.run`` (the entry point hands over what it needs), never litellm or MLflow (slow to
import, and an estimate should answer at once), and no strategy or metric code path that calls
a model (only their ``estimate`` hooks, through the modules the ``RunConfig`` loaded).
"""
