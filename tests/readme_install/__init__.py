"""A host project set up with nothing but the README's install section, on `startproject`'s settings."""
