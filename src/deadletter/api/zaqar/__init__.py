"""The native API: OpenStack Zaqar v2 with the dead-letter extensions."""
