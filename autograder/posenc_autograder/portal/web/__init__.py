"""The portal over HTTP: middleware, the answers and access rules every handler shares, the handlers grouped by
who uses them, and the instructor's forms."""
