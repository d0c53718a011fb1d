"""DDP communication hooks: the hierarchical all-reduce, and the stock compression hooks by name."""
