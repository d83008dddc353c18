"""What dbarena starts and must undo: state records, the watchdog, the reaper, and
points the store could not take."""
