"""Writing F-curves in one pass into slotted actions (Blender 4.5 LTS and 5.0, recipes §4).

``write_action`` creates a new action with one slot for the ID and fills every
channel with ``keyframe_points.add(n)`` + ``foreach_set`` (no per-key Python
loop), linear interpolation. Assigning the action is left to the caller, so a
failed bake never touches the user's animation.
"""
from __future__ import annotations

import bpy
import numpy as np
from bpy_extras import anim_utils


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


def write_action(id_data, name: str, frames, channels) -> tuple:
    """New action ``name`` for ``id_data`` with keys at ``frames`` (F,).

    channels: iterable of (data_path, array_index, group, values (F,)).
    Returns (action, slot). The action is not assigned.
    """
    action = bpy.data.actions.new(name)
    try:
        slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
        bag = _channelbag(action, slot)
        frames = np.asarray(frames, dtype=np.float32)
        n = len(frames)
        co = np.empty(2 * n, dtype=np.float32)
        co[0::2] = frames
        interp = np.full(n, _linear(), dtype=np.int32)
        groups: dict = {}
        for path, index, group, values in channels:
            fc = bag.fcurves.new(path, index=index)  # 4.5 has no group_name argument: group set below
            if group:
                if group not in groups:
                    groups[group] = bag.groups.new(group)
                fc.group = groups[group]
            fc.keyframe_points.add(n)
            co[1::2] = values
            fc.keyframe_points.foreach_set("co", co)
            fc.keyframe_points.foreach_set("interpolation", interp)
            fc.update()
    except Exception:
        bpy.data.actions.remove(action)
        raise
    action.use_fake_user = False
    return action, slot


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
