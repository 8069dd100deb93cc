"""The agent loop every face shares, its events, compaction and the archive it leaves,
activity summaries and the permission policy. Protocol-free."""
