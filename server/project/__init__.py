"""What an ask is told of the project and its environment: its system prompt assembled anew at
every ask and the nested instructions its tools come upon (``project``), from the base prompt,
instructions, skills, the user's commands and the environment block (below the engine, the
conversations and the settings; above the configuration)."""
