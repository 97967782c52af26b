"""The watchdog: heartbeat lapse becomes LOST; a wait past its budget becomes a finding."""
