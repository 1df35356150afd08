<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name>ckpt::app::DetailsPane</name>
    <message>
        <location filename="../app/details_pane.cpp" line="52" />
        <source>No data to read for this tensor.</source>
        <translation>此张量没有可读取的数据。</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="54" />
        <source>This dtype has no statistics.</source>
        <translation>此数据类型没有统计信息。</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="72" />
        <source>First values: %1
min %2  max %3  mean %4  std %5
zeros %6  NaN %7  Inf %8</source>
        <translation>前几个值：%1
最小 %2  最大 %3  均值 %4  标准差 %5
零 %6  NaN %7  Inf %8</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="82" />
        <source>Could not compute: %1</source>
        <translation>无法计算：%1</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Rank</source>
        <translation>Rank</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <location filename="../app/details_pane.cpp" line="169" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Offset</source>
        <translation>偏移</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Length</source>
        <translation>长度</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Padding</source>
        <translation>填充</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="101" />
        <source>Search the configuration</source>
        <translation>搜索配置</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="104" />
        <source>Show values and statistics</source>
        <translation>显示数值和统计</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="151" />
        <source>&lt;p&gt;Select an item to see its details.&lt;/p&gt;</source>
        <translation>&lt;p&gt;选择一个项目以查看详细信息。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="155" />
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="157" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="157" />
        <source>Shape</source>
        <translation>形状</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="158" />
        <source>Elements</source>
        <translation>元素数</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="159" />
        <source>Bytes</source>
        <translation>字节</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="162" />
        <source>Stride</source>
        <translation>步长</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="163" />
        <source>Storage</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="164" />
        <source>record %1, offset %2, %3</source>
        <translation>记录 %1，偏移 %2，%3</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="168" />
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="174" />
        <source>Shares storage with</source>
        <translation>与以下张量共享存储</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="180" />
        <source>Tied to</source>
        <translation>绑定到</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="181" />
        <source>Flat group</source>
        <translation>扁平分组</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="200" />
        <source>Optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="215" />
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="216" />
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="233" />
        <source>Computing...</source>
        <translation>正在计算...</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="36" />
        <source>DeepSpeed checkpoint</source>
        <translation>DeepSpeed 检查点</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="37" />
        <source>tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="38" />
        <source>tag (latest)</source>
        <translation>标签（最新）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="39" />
        <source>ds_config</source>
        <translation>ds_config 配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="40" />
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="41" />
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="42" />
        <source>parameter</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="43" />
        <source>parameter (frozen)</source>
        <translation>参数（冻结）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="44" />
        <source>tied parameter</source>
        <translation>绑定参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="45" />
        <source>buffer</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="46" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="47" />
        <source>tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="48" />
        <source>model states</source>
        <translation>模型状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="49" />
        <source>optimizer states</source>
        <translation>优化器状态文件</translation>
    </message>
</context>
<context>
    <name>ckpt::app::ExportDialog</name>
    <message>
        <location filename="../app/export_dialog.cpp" line="30" />
        <source>Export consolidated model</source>
        <translation>导出合并后的模型</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="40" />
        <source>Leave out frozen parameters</source>
        <translation>不包含冻结参数</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="42" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="46" />
        <source>Tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="47" />
        <source>Format</source>
        <translation>格式</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="48" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="49" />
        <source>Largest shard</source>
        <translation>最大分片</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="51" />
        <location filename="../app/export_dialog.cpp" line="72" />
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="56" />
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="57" />
        <location filename="../app/export_dialog.cpp" line="180" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="58" />
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="87" />
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/export_dialog.cpp" line="90" />
        <source>Wrote %n file(s) to %1 in %2 s.</source>
        <translation><numerusform>已将 %n 个文件写入 %1，用时 %2 秒。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="96" />
        <source>Cancelled; nothing was left behind.</source>
        <translation>已取消，没有留下任何输出。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="99" />
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="123" />
        <source>Cancelling...</source>
        <translation>正在取消...</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="138" />
        <source>%1: %2 of %3, %4 GB/s, %5 s left</source>
        <translation>%1：%2 / %3，%4 GB/s，剩余 %5 秒</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="149" />
        <source>Choose an output folder first.</source>
        <translation>请先选择输出文件夹。</translation>
    </message>
</context>
<context>
    <name>ckpt::app::MainWindow</name>
    <message>
        <location filename="../app/main_window.cpp" line="47" />
        <source>Checkpoint Studio</source>
        <translation>Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="55" />
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="56" />
        <source>Open &amp;Folder...</source>
        <translation>打开文件夹(&amp;F)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="57" />
        <source>Open checkpoint folder</source>
        <translation>打开检查点文件夹</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="60" />
        <source>&amp;Open File...</source>
        <translation>打开文件(&amp;O)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="62" />
        <source>Open checkpoint file</source>
        <translation>打开检查点文件</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="63" />
        <source>Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors);;All files (*)</source>
        <translation>检查点 (*.pt *.pth *.bin *.ckpt *.safetensors);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="66" />
        <source>&amp;Export Model...</source>
        <translation>导出模型(&amp;E)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="69" />
        <source>Start &amp;Page</source>
        <translation>起始页(&amp;P)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="70" />
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="71" />
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="81" />
        <source>&lt;h2&gt;Checkpoint Studio&lt;/h2&gt;&lt;p&gt;Open a checkpoint folder or file, drop one here, or pick a recent item.&lt;/p&gt;</source>
        <translation>&lt;h2&gt;Checkpoint Studio&lt;/h2&gt;&lt;p&gt;打开检查点文件夹或文件，拖放到此处，或选择最近打开的项目。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="85" />
        <source>Open the bundled example</source>
        <translation>打开自带示例</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="100" />
        <source>Filter by name (wildcards, or a regular expression)</source>
        <translation>按名称筛选（通配符或正则表达式）</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="101" />
        <source>Regular expression</source>
        <translation>正则表达式</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="142" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="148" />
        <source>Opening cancelled</source>
        <translation>已取消打开</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="158" />
        <source>Compute: %1</source>
        <translation>计算设备：%1</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="176" />
        <source>Opening %1...</source>
        <translation>正在打开 %1...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="200" />
        <source>Cannot open: %1</source>
        <translation>无法打开：%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/main_window.cpp" line="218" />
        <source>&lt;b&gt;%n warning(s)&lt;/b&gt;&lt;br&gt;</source>
        <translation><numerusform>&lt;b&gt;%n 条警告&lt;/b&gt;&lt;br&gt;</numerusform></translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="223" />
        <source>%1 - Checkpoint Studio</source>
        <translation>%1 - Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="224" />
        <source>Opened %1</source>
        <translation>已打开 %1</translation>
    </message>
</context>
<context>
    <name>ckpt::app::TreeModel</name>
    <message>
        <location filename="../app/tree_model.cpp" line="139" />
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="141" />
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="143" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="145" />
        <source>Shape</source>
        <translation>形状</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="147" />
        <source>Elements</source>
        <translation>元素数</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="149" />
        <source>Bytes</source>
        <translation>字节</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="151" />
        <source>Ranks</source>
        <translation>Rank 数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="16" />
        <source>DeepSpeed checkpoint</source>
        <translation>DeepSpeed 检查点</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="17" />
        <source>configuration</source>
        <translation>配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="18" />
        <source>rank files</source>
        <translation>各 rank 文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="19" />
        <source>tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="20" />
        <source>tag (latest)</source>
        <translation>标签（最新）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="21" />
        <source>ds_config</source>
        <translation>ds_config 配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="22" />
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="23" />
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="24" />
        <source>parameter</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="25" />
        <source>parameter (frozen)</source>
        <translation>参数（冻结）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="26" />
        <source>tied parameter</source>
        <translation>绑定参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="27" />
        <source>buffer</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="28" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="29" />
        <source>tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="30" />
        <source>model states</source>
        <translation>模型状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="31" />
        <source>optimizer states</source>
        <translation>优化器状态文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="32" />
        <source>pipeline layer</source>
        <translation>流水线层</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="33" />
        <source>MoE expert</source>
        <translation>MoE 专家</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="34" />
        <source>MoE expert optimizer</source>
        <translation>MoE 专家优化器</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="35" />
        <source>other</source>
        <translation>其他</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <location filename="../app/main.cpp" line="105" />
        <source>Checkpoint Studio</source>
        <translation>Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="117" />
        <source>Inspect, consolidate and convert training checkpoints</source>
        <translation>查看、合并和转换训练检查点</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="122" />
        <source>Save a screenshot of the window once PATH is open, then exit.</source>
        <translation>打开 PATH 后保存窗口截图并退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="125" />
        <source>Select this item of the tree first.</source>
        <translation>先在树中选中此项目。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="129" />
        <source>Save a screenshot of the export dialog while it runs, then exit.</source>
        <translation>导出运行时保存导出对话框的截图并退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="133" />
        <source>Colours: system (follow the desktop), light or dark. The default is the "palette" setting, else system.</source>
        <translation>配色：system（跟随桌面）、light（浅色）或 dark（深色）。默认取 "palette" 设置，否则为 system。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="141" />
        <source>Checkpoint folder or file to open.</source>
        <translation>要打开的检查点文件夹或文件。</translation>
    </message>
</context>
</TS>