"""Running a benchmark: a request (:mod:`.request`) resolved against a preset (:mod:`.presets`) into a plan of cells
(:mod:`.plan`), its grid searches (:mod:`.search`, :mod:`.selection`), the plugins it loads (:mod:`.plugin_host`), and
the ways of executing it: in this process (with a time limit per cell, :mod:`.watchdog`), in worker processes
(:mod:`.workers`) or as cluster jobs (:mod:`.executors`); :func:`.runner.run` is the one entry point."""
