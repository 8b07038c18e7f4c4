"""Reading stored results: as DataFrames (:mod:`.frames`), the state of a results folder (:mod:`.status`), two sets
side by side (:mod:`.compare`) and a preset's calibration at two training lengths (:mod:`.calibrate`)."""
