"""Real adapters for the ports: langchain chat models and Tavily search."""
