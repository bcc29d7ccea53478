"""What a person does with a trained run: generate, chat server, merge, export."""
