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
