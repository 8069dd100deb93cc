"""Checkpoints: what each ask changed in a folder, kept in a shadow git repository, and the
rewind that undoes it. Knows nothing of the agent loop or the faces."""
