"""The base of the double's enums: a .NET enum value as pythonnet hands it to
a script prints as its name and has ToString() (System.Object's)."""
import enum


class NetEnum(enum.IntEnum):
    def __str__(self):
        return self.name

    def ToString(self):
        return self.name
