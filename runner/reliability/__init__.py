"""How far to trust a judge: its repeated samples pooled, and their agreement.

Statistics over values a job already has: no model call, no job, no store. ``samples.py``
pools a judged item's K samples into its value (majority of a label, mean of a number, a tie
stated) and keeps each; ``agreement.py`` is Krippendorff's alpha among the samples, at the
level of measurement the value's declared kind implies, with a bootstrap CI over documents.
"""
