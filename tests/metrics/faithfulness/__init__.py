"""Tests of the faithfulness metric plugin (metrics/faithfulness/)."""
