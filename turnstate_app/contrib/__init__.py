"""Optional integrations with agent frameworks, each an extra; the core never imports them."""
