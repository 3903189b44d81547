"""System.Collections: its Generic namespace."""
