"""Root fixtures. Area fixtures live in each tests/<area>/conftest.py."""
