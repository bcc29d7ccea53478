"""The training engine: encoding (reply-only labels), batching, the loop,
evaluation, checkpoints, device choice and model finding. Imports torch lazily;
depends only on trainer.run."""
