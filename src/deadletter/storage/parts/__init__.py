"""The parts of the storage interface; `storage.base.Transaction` is their union."""
