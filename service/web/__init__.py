"""Server-rendered pages for learners and instructors over the same services and permission checks as the API."""
