"""Process services that every layer uses: logging and progress bars (:mod:`.logs`), seeds (:mod:`.seeds`), fault
injection and out-of-memory handling (:mod:`.faults`), and telling a real Ctrl-C from plugin code's (:mod:`.interrupts`)."""
