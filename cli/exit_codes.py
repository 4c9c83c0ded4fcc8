"""Exit codes, as documented in ``--help`` and the README's "Exit codes" (imports nothing heavy)."""

EXIT_OK = 0
EXIT_TRAINING_FAILED = 1
EXIT_INVALID = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_OUTPUT_CLOSED = 141

EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 training failed (NaN loss, graph error, a hook raised; with --sweep: any run); "
    "2 invalid config, data or usage; 130 interrupted by Ctrl-C, 143 by SIGTERM (after saving); 141 standard "
    "output closed by its reader (| head; after saving)."
)
