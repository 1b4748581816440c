import gc
import sys

# Startup allocates only what lives as long as the process (modules, classes, the config): no collection is
# run for it (broker.cli re-enables the collector once the listeners are up).
gc.disable()

from broker.cli import main  # noqa: E402

sys.exit(main())
