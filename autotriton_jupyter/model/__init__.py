"""Everything about the language model: the Generator protocol, prompts, extraction, backends."""
