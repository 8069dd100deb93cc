"""What an ask is told of the project and its environment: the base system prompt, instructions,
skills, the user's commands, the environment block (below the engine, above the configuration)."""
