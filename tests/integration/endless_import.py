"""A module whose import never ends: a fork server told to preload it can only be killed."""

import threading

threading.Event().wait()
