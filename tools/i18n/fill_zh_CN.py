#!/usr/bin/env python3
"""Fills translations/checkpoint-studio_zh_CN.ts from the table below after `lupdate` (the
`update_translations` build target) has refreshed the sources. Every source must have an entry:
the script fails on any it does not know, so a new string cannot ship untranslated.
Usage: python3 tools/i18n/fill_zh_CN.py"""
import pathlib
import sys
import xml.etree.ElementTree as ET

TS = pathlib.Path(__file__).resolve().parents[2] / "translations/checkpoint-studio_zh_CN.ts"

ZH = {
    "%1 - Checkpoint Studio": "%1 - Checkpoint Studio",
    "%1: %2 of %3, %4 GB/s, %5 s left": "%1：%2 / %3，%4 GB/s，剩余 %5 秒",
    "&Export Model...": "导出模型(&E)...",
    "&File": "文件(&F)",
    "&Open File...": "打开文件(&O)...",
    "&Quit": "退出(&Q)",
    "<b>%n warning(s)</b><br>": "<b>%n 条警告</b><br>",
    "<h2>Checkpoint Studio</h2><p>Open a checkpoint folder or file, drop one here, or pick a recent item.</p>":
        "<h2>Checkpoint Studio</h2><p>打开检查点文件夹或文件，拖放到此处，或选择最近打开的项目。</p>",
    "<p>Select an item to see its details.</p>": "<p>选择一个项目以查看详细信息。</p>",
    "Browse...": "浏览...",
    "Bytes": "字节",
    "Cancel": "取消",
    "Cancelled; nothing was left behind.": "已取消，没有留下任何输出。",
    "Cancelling...": "正在取消...",
    "Cannot open: %1": "无法打开：%1",
    "Checkpoint Studio": "Checkpoint Studio",
    "Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors);;All files (*)":
        "检查点 (*.pt *.pth *.bin *.ckpt *.safetensors);;所有文件 (*)",
    "Choose an output folder first.": "请先选择输出文件夹。",
    "Close": "关闭",
    "Compute: %1": "计算设备：%1",
    "Computing...": "正在计算...",
    "Could not compute: %1": "无法计算：%1",
    "DeepSpeed checkpoint": "DeepSpeed 检查点",
    "Elements": "元素数",
    "Error": "错误",
    "Export": "导出",
    "Export consolidated model": "导出合并后的模型",
    "Export failed": "导出失败",
    "File": "文件",
    "Filter by name (wildcards, or a regular expression)": "按名称筛选（通配符或正则表达式）",
    "First values: %1\nmin %2  max %3  mean %4  std %5\nzeros %6  NaN %7  Inf %8":
        "前几个值：%1\n最小 %2  最大 %3  均值 %4  标准差 %5\n零 %6  NaN %7  Inf %8",
    "Flat group": "扁平分组",
    "Format": "格式",
    "Kind": "类型",
    "Largest shard": "最大分片",
    "Leave out frozen parameters": "不包含冻结参数",
    "Length": "长度",
    "Main": "主工具栏",
    "MoE expert": "MoE 专家",
    "MoE expert optimizer": "MoE 专家优化器",
    "Name": "名称",
    "No data to read for this tensor.": "此张量没有可读取的数据。",
    "Offset": "偏移",
    "Open &Folder...": "打开文件夹(&F)...",
    "Open checkpoint file": "打开检查点文件",
    "Open checkpoint folder": "打开检查点文件夹",
    "Open folder": "打开文件夹",
    "Open the bundled example": "打开自带示例",
    "Opened %1": "已打开 %1",
    "Opening %1...": "正在打开 %1...",
    "Opening cancelled": "已取消打开",
    "Optimizer state": "优化器状态",
    "Output folder": "输出文件夹",
    "Padding": "填充",
    "Rank": "Rank",
    "Ranks": "Rank 数",
    "Regular expression": "正则表达式",
    "Search the configuration": "搜索配置",
    "Shape": "形状",
    "Shares storage with": "与以下张量共享存储",
    "Show values and statistics": "显示数值和统计",
    "Start &Page": "起始页(&P)",
    "Storage": "存储",
    "Stride": "步长",
    "Tag": "标签",
    "This dtype has no statistics.": "此数据类型没有统计信息。",
    "Tied to": "绑定到",
    "Value": "值",
    "Wrote %n file(s) to %1 in %2 s.": "已将 %n 个文件写入 %1，用时 %2 秒。",
    "buffer": "缓冲区",
    "configuration": "配置",
    "rank files": "各 rank 文件",
    "ds_config": "ds_config 配置",
    "dtype": "数据类型",
    "files": "文件",
    "model states": "模型状态",
    "none": "无",
    "optimizer state": "优化器状态",
    "optimizer states": "优化器状态文件",
    "other": "其他",
    "parameter": "参数",
    "parameter (frozen)": "参数（冻结）",
    "parameters": "参数",
    "pipeline layer": "流水线层",
    "record %1, offset %2, %3": "记录 %1，偏移 %2，%3",
    "tag": "标签",
    "tag (latest)": "标签（最新）",
    "tensor": "张量",
    "tied parameter": "绑定参数",
    "Inspect, consolidate and convert training checkpoints": "查看、合并和转换训练检查点",
    "Save a screenshot of the window once PATH is open, then exit.": "打开 PATH 后保存窗口截图并退出。",
    "Select this item of the tree first.": "先在树中选中此项目。",
    "Save a screenshot of the export dialog while it runs, then exit.": "导出运行时保存导出对话框的截图并退出。",
    "Checkpoint folder or file to open.": "要打开的检查点文件夹或文件。",
    "Colours: system (follow the desktop), light or dark. The default is the \"palette\" setting, else system.":
        "配色：system（跟随桌面）、light（浅色）或 dark（深色）。默认取 \"palette\" 设置，否则为 system。",
    # The Bloat view and the Slim dialog (issue 11). "Bloat" is 膨胀分析, "slim" 精简.
    "model weights": "模型权重",
    "fp32 masters": "fp32 主权重",
    "exp_avg": "exp_avg",
    "exp_avg_sq": "exp_avg_sq",
    "other optimizer state": "其他优化器状态",
    "Slim...": "精简...",
    "Write a copy in which every storage keeps only the bytes its views reach":
        "写出一份副本，其中每个存储只保留其视图用到的字节",
    "Files, most wasted first": "文件（浪费最多的在前）",
    "Bytes by role": "按用途划分的字节",
    "Storages": "存储",
    "Select a file, a tag or a checkpoint to see where its bytes go.": "选择一个文件、标签或检查点，查看其字节的去向。",
    "<b>%1</b>: reading...": "<b>%1</b>：正在读取...",
    "Reading %1": "正在读取 %1",
    "<b>%1</b>: cancelled.": "<b>%1</b>：已取消。",
    "<b>%1</b>: %2": "<b>%1</b>：%2",
    "<b>%1</b>: %n file(s), %2 on disk.": "<b>%1</b>：%n 个文件，磁盘占用 %2。",
    "No torch.save file here: nothing to slim.": "这里没有 torch.save 文件：无可精简。",
    "<span style=\"color:#d64f45\"><b>%1 wasted</b></span> (%2% of the storage bytes): no tensor view reaches them. "
    "Slim writes a copy without them (gaps inside a strided view stay, so that torch.load gives the same strides).":
        "<span style=\"color:#d64f45\"><b>浪费 %1</b></span>（占存储字节的 %2%）：没有任何张量视图用到这些字节。"
        "精简会写出不含它们的副本（带步长的视图内部的空隙会保留，以便 torch.load 得到相同的步长）。",
    "Nothing wasted: every storage byte is reached by a view.": "没有浪费：每个存储字节都被某个视图用到。",
    "Storages: no torch.save file": "存储：没有 torch.save 文件",
    "%1 is not a torch.save file: it has no storages.": "%1 不是 torch.save 文件：没有存储。",
    "Storages of %1: reading...": "%1 的存储：正在读取...",
    "Storages of %1: cancelled.": "%1 的存储：已取消。",
    "Storages of %1: %2": "%1 的存储：%2",
    "Storages of %1: %n storage(s), %2 of %3 wasted": "%1 的存储：%n 个存储，%3 中浪费 %2",
    "%1, not a torch.save file": "%1，不是 torch.save 文件",
    "%1, nothing wasted": "%1，没有浪费",
    "%1, %2 wasted (%3%)": "%1，浪费 %2（%3%）",
    "not a torch.save file": "不是 torch.save 文件",
    "used by a view": "被视图使用",
    "wasted (no view reaches it)": "浪费（没有视图用到）",
    "overhead (pickle, zip records)": "开销（pickle、zip 记录）",
    "file": "文件",
    "used": "已使用",
    "wasted": "浪费",
    "overhead": "开销",
    "other file": "其他文件",
    "&Slim...": "精简(&S)...",
    "Write a copy whose storages keep only the bytes their tensors view": "写出一份副本，其存储只保留张量视图用到的字节",
    "&Bloat of a Folder...": "分析文件夹的膨胀(&B)...",
    "Folder to analyse": "要分析的文件夹",
    "Bloat": "膨胀分析",
    "&Bloat": "膨胀分析(&B)",
    "Where the bytes of the selected file, tag or checkpoint go, and how many are wasted":
        "所选文件、标签或检查点的字节去向，以及浪费了多少",
    "&View": "视图(&V)",
    "%1 is not open in the tree": "%1 未在树中打开",
    "%1: %2 (%3%)": "%1：%2（%3%）",
    "%1: %2 bytes (%3), %4% of %5": "%1：%2 字节（%3），占 %5 的 %4%",
    "%1 \u2192 %2, %3 saved (%4%)": "%1 \u2192 %2，节省 %3（%4%）",
    "Slim %1": "精简 %1",
    "Writes a copy of this folder in which every torch.save file keeps, of each storage, only the bytes its tensors "
    "view. Other files are copied. torch.load gives the same tensors; the input is not changed.":
        "写出此文件夹的副本，其中每个 torch.save 文件的每个存储只保留其张量视图用到的字节。其他文件原样复制。"
        "torch.load 得到的张量相同；输入不会被修改。",
    "Writes a copy of this file in which each storage keeps only the bytes its tensors view. torch.load gives the "
    "same tensors; the input is not changed.":
        "写出此文件的副本，其中每个存储只保留其张量视图用到的字节。torch.load 得到的张量相同；输入不会被修改。",
    "Input": "输入",
    "Output file": "输出文件",
    "Action": "操作",
    "Before": "之前",
    "Predicted": "预计",
    "After": "之后",
    "Slim": "精简",
    "Open in window": "在窗口中打开",
    "Cannot predict: %1": "无法预计：%1",
    "Predicted: %1.": "预计：%1。",
    "Predicted: nothing to gain, %1 would be copied as it is.": "预计：无可节省，%1 将原样复制。",
    "%1 ms": "%1 毫秒",
    "%1 s": "%1 秒",
    "Done in %1: %2. Written to %3.": "完成，用时 %1：%2。已写入 %3。",
    "Slim failed": "精简失败",
    "Slimming failed.": "精简失败。",
    "Slimming failed on %1.": "精简 %1 时失败。",
    "slimmed": "已精简",
    "copied (not bloated)": "已复制（没有膨胀）",
    "copied (not a torch.save file)": "已复制（不是 torch.save 文件）",
    "%1 bytes": "%1 字节",
    "Predicting the savings...": "正在预计可节省的空间...",
    "Choose an output file first.": "请先选择输出文件。",
    "Starting...": "正在开始...",
    "%1\n%2 %3, %4 bytes of elements\nClick to select it in the tree.": "%1\n%2 %3，元素共 %4 字节\n单击可在树中选中它。",
    "%1: %2 bytes, %3 reached by its views, %4 wasted": "%1：%2 字节，视图用到 %3，浪费 %4",
    "Reached by something other than a plain view: all of it counts.": "被普通视图以外的方式使用：全部计为已使用。",
    "A view of storage %1: its bytes are counted there.": "存储 %1 的视图：其字节计入该存储。",
    "A view too fragmented to enumerate is counted by its hull.": "过于零碎、无法逐段列出的视图按其覆盖范围计算。",
    "a view of storage %1": "存储 %1 的视图",
    "no tensor (saved for itself)": "无张量（单独保存）",
    "%n tensor(s)": "%n 个张量",
    "Size": "大小",
    "Used": "已使用",
    "% used": "使用率",
    "Tensors": "张量",
    "Show where the bytes of this file or folder go (the Bloat view). With --screenshot, save the window once that "
    "is computed; with --screenshot-export, the Slim dialog once it has slimmed it into a temporary folder.":
        "在膨胀分析视图中显示此文件或文件夹的字节去向。配合 --screenshot 时，计算完成后保存窗口截图；"
        "配合 --screenshot-export 时，将其精简到临时文件夹后保存精简对话框的截图。",
}


def main():
    tree = ET.parse(TS)
    missing = []
    for msg in tree.iter("message"):
        src = msg.find("source").text or ""
        tr = msg.find("translation")
        if src not in ZH:
            missing.append(src)
            continue
        tr.attrib.pop("type", None)
        if msg.get("numerus") == "yes":
            for child in list(tr):
                tr.remove(child)
            tr.text = None
            ET.SubElement(tr, "numerusform").text = ZH[src]
        else:
            tr.text = ZH[src]
    if missing:
        print("untranslated sources:\n  " + "\n  ".join(missing))
        return 1
    tree.write(TS, encoding="utf-8", xml_declaration=True)
    print(f"filled {TS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
