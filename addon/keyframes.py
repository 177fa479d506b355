"""Writing F-curves in one pass into slotted actions (Blender 4.5 LTS and 5.0, recipes §4).

``write_action`` (``ActionWriter`` for many) creates a new action with one slot and fills every
channel with ``keyframe_points.add(n)`` + ``foreach_set`` (no per-key Python
loop), linear interpolation. Assigning the action is left to the caller, so a
failed bake never touches the user's animation.
"""
from __future__ import annotations

import functools

import bpy
import numpy as np
from bpy_extras import anim_utils


@functools.cache
def _linear():
    return bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value


def _channelbag(action, slot):
    """The slot's channel bag, created on the action's first layer/keyframe strip if missing.

    ``anim_utils.action_ensure_channelbag_for_slot`` exists from 5.0 on; 4.5 LTS has the
    same data model, reached through layers and strips.
    """
    ensure = getattr(anim_utils, "action_ensure_channelbag_for_slot", None)
    if ensure is not None:
        return ensure(action, slot)
    layer = action.layers[0] if action.layers else action.layers.new("Layer")
    strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True)


class ActionWriter:
    """Writes the keys of many IDs into one new action, a slot for each (a context manager; ``action``).

    A slot made with ``action.slots.new`` renames itself through every ID of the file (Blender propagates
    slot identifiers to their users), so one slot per baked object would cost time in the number of
    objects, for each object. Instead the action is assigned to a proxy object outside every scene whose
    ``fcurve_ensure_for_datablock`` makes each slot as a new one, named after the ID it is for (through the
    proxy's ``last_slot_identifier``). One action for all also spares removing many actions later
    (``bpy.data.batch_remove`` takes time in their number squared). The proxy is removed on exit; the action
    is the caller's, also when writing fails.
    """

    PROXY = "RedMax keying"

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.action = bpy.data.actions.new(self.name)
        self.proxy = bpy.data.objects.new(self.PROXY, None)
        self.proxy_data = self.proxy.animation_data_create()
        self.proxy_data.action = self.action
        return self

    def __exit__(self, *exc):
        bpy.data.objects.remove(self.proxy)
        return False

    def _slot(self, id_data, first):
        """(slot, channel bag, its first F-curve or None) of a new slot for ``id_data``."""
        path, index, group = first
        if id_data.id_type == "OBJECT":
            try:
                self.proxy_data.action_slot = None
                self.proxy_data.last_slot_identifier = "OB" + id_data.name  # (the new slot's identifier)
                fc = self.action.fcurve_ensure_for_datablock(self.proxy, path, index=index, group_name=group or "")
                slot = self.proxy_data.action_slot
            except (AttributeError, TypeError):  # (an API this Blender lacks: the slow way below)
                slot = None
            if slot is not None:
                return slot, _channelbag(self.action, slot), fc
        slot = self.action.slots.new(id_type=id_data.id_type, name=id_data.name)  # (other ID types: the slow way)
        return slot, _channelbag(self.action, slot), None

    def write(self, id_data, frames, channels):
        """A new slot of ``action`` for ``id_data`` with keys at ``frames`` (F,); returns the slot.

        channels: list of (data_path, array_index, group ("": none), values (F,)).
        """
        frames = np.asarray(frames, dtype=np.float32)
        n = len(frames)
        co = np.empty(2 * n, dtype=np.float32)
        co[0::2] = frames
        interp = np.full(n, _linear(), dtype=np.int32)
        slot, bag, first = self._slot(id_data, channels[0][:3])
        groups = {g.name: g for g in bag.groups}
        for k, (path, index, group, values) in enumerate(channels):
            fc = first if k == 0 and first is not None else bag.fcurves.new(path, index=index)
            if group and fc.group is None:  # (4.5 has no group_name argument in fcurves.new)
                if group not in groups:
                    groups[group] = bag.groups.new(group)
                fc.group = groups[group]
            fc.keyframe_points.add(n)
            co[1::2] = values
            fc.keyframe_points.foreach_set("co", co)
            fc.keyframe_points.foreach_set("interpolation", interp)
            fc.update()
        return slot


def write_action(id_data, name: str, frames, channels) -> tuple:
    """New action ``name`` for ``id_data`` alone with keys at ``frames`` (F,) (``ActionWriter.write``).

    channels: iterable of (data_path, array_index, group, values (F,)).
    Returns (action, slot). The action is not assigned.
    """
    with ActionWriter(name) as writer:
        try:
            return writer.action, writer.write(id_data, frames, list(channels))
        except Exception:
            bpy.data.actions.remove(writer.action)
            raise


def assign_slot(id_data, action, slot) -> None:
    """Assign ``action`` and its ``slot`` (an ActionSlot) to ``id_data``."""
    ad = id_data.animation_data or id_data.animation_data_create()
    ad.action = action
    ad.action_slot = slot


def slots_by_identifier(action) -> dict:
    """{identifier: slot} of ``action`` (one pass: looking a slot up by identifier scans the slots)."""
    return {slot.identifier: slot for slot in action.slots} if action is not None else {}


def assign(id_data, action, slot_identifier: str | None) -> None:
    """Assign ``action`` (or None) and the slot with this identifier to ``id_data``."""
    ad = id_data.animation_data or id_data.animation_data_create()
    ad.action = action
    if action is not None and slot_identifier:
        for slot in action.slots:
            if slot.identifier == slot_identifier:
                ad.action_slot = slot
                break


def current(id_data) -> tuple:
    """(action or None, slot identifier or "") currently assigned to ``id_data``."""
    ad = id_data.animation_data
    if ad is None or ad.action is None:
        return None, ""
    return ad.action, ad.action_slot.identifier if ad.action_slot is not None else ""


def fcurves(id_data) -> list:
    """The F-curves that animate ``id_data``: its assigned action's channel bag for its slot ([] if none)."""
    ad = id_data.animation_data
    if ad is None or ad.action is None or ad.action_slot is None:
        return []
    bag = anim_utils.action_get_channelbag_for_slot(ad.action, ad.action_slot)
    return list(bag.fcurves) if bag is not None else []
