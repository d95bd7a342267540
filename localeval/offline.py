"""Air-gapped by construction: imported first, before transformers or huggingface_hub read these.

Both libraries read their offline switches once, at import time, so setting them here (and not
leaving it to the user's shell) is what guarantees no download is ever attempted.
"""

import os

OFFLINE_SWITCHES = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "DO_NOT_TRACK": "1",
    # tokenizers forks worker threads per process; quiet its warning after we fork nothing.
    "TOKENIZERS_PARALLELISM": "false",
}

os.environ.update(OFFLINE_SWITCHES)
